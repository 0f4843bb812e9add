python train.py --epochs 40 \
                --batch_size 40 \
                --use_gpu 0 \
                --train_data_path 'train_data/train_data.csv' \
                --model_dir 'model_dir' \
                --hidden1_units 75 \
                --hidden2_units 50 \
                --hidden3_units 25
                